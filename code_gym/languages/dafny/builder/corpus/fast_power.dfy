// Exponentiation by squaring in O(log e) multiplications.

function Power(b: int, e: nat): int
{
  if e == 0 then 1 else b * Power(b, e - 1)
}

lemma PowerAdd(b: int, m: nat, n: nat)
  ensures Power(b, m + n) == Power(b, m) * Power(b, n)
{
  if m > 0 {
    PowerAdd(b, m - 1, n);
    MulAssociative(b, Power(b, m - 1), Power(b, n));
  }
}

lemma MulAssociative(x: int, y: int, z: int)
  ensures x * (y * z) == (x * y) * z
{
}

lemma PowerSquare(b: int, e: nat)
  ensures Power(b * b, e) == Power(b, 2 * e)
{
  if e > 0 {
    PowerSquare(b, e - 1);
    PowerAdd(b, 2, 2 * e - 2);
    assert Power(b, 1) == b;
    assert Power(b, 2) == b * b;
  }
}

method FastPower(b: int, e: nat) returns (r: int)
  ensures r == Power(b, e)
{
  var x := b;
  var n := e;
  r := 1;
  while n > 0
    invariant r * Power(x, n) == Power(b, e)
    decreases n
  {
    if n % 2 == 1 {
      assert Power(x, n) == x * Power(x, n - 1);
      MulAssociative(r, x, Power(x, n - 1));
      r := r * x;
      n := n - 1;
    } else {
      PowerSquare(x, n / 2);
      assert 2 * (n / 2) == n;
      x := x * x;
      n := n / 2;
    }
  }
}
