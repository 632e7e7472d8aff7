// Integer powers by repeated multiplication, with the law of exponents b^(m+n) = b^m * b^n.

function Power(b: int, e: nat): int
{
  if e == 0 then 1 else b * Power(b, e - 1)
}

method ComputePower(b: int, e: nat) returns (r: int)
  ensures r == Power(b, e)
{
  r := 1;
  var i := 0;
  while i < e
    invariant 0 <= i <= e
    invariant r == Power(b, i)
  {
    r := r * b;
    i := i + 1;
  }
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

method PowerOfSum(b: int, m: nat, n: nat) returns (r: int)
  ensures r == Power(b, m + n)
{
  var x := ComputePower(b, m);
  var y := ComputePower(b, n);
  PowerAdd(b, m, n);
  r := x * y;
}
