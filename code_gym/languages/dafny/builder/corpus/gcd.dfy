// The greatest common divisor by Euclid's remainder algorithm, against a subtraction-based
// recursive definition.

function Gcd(a: nat, b: nat): nat
  decreases a + b
{
  if a == 0 then b
  else if b == 0 then a
  else if a >= b then Gcd(a - b, b)
  else Gcd(a, b - a)
}

lemma GcdSymmetric(a: nat, b: nat)
  ensures Gcd(a, b) == Gcd(b, a)
  decreases a + b
{
  if a > 0 && b > 0 {
    if a > b {
      GcdSymmetric(a - b, b);
    } else if a < b {
      GcdSymmetric(a, b - a);
    }
  }
}

lemma GcdRemainder(a: nat, b: nat)
  requires b > 0
  ensures Gcd(a, b) == Gcd(a % b, b)
  decreases a
{
  if a >= b {
    ModSubtract(a, b);
    GcdRemainder(a - b, b);
  }
}

lemma ModSubtract(a: int, b: int)
  requires a >= b > 0
  ensures (a - b) % b == a % b
{
  var q, r := a / b, a % b;
  assert a == q * b + r && 0 <= r < b;
  assert a - b == (q - 1) * b + r;
  ModUnique(a - b, b, q - 1, r);
}

lemma ModUnique(a: int, b: int, q: int, r: int)
  requires b > 0 && 0 <= r < b && a == q * b + r
  ensures a % b == r
{
  var q', r' := a / b, a % b;
  assert a == q' * b + r';
  assert (q - q') * b == r' - r;
  if q > q' {
    assert (q - q') * b >= b;
  } else if q < q' {
    assert (q' - q) * b >= b;
  }
}

method EuclidGcd(a: nat, b: nat) returns (g: nat)
  ensures g == Gcd(a, b)
{
  var x, y := a, b;
  while y != 0
    invariant Gcd(x, y) == Gcd(a, b)
    decreases y
  {
    GcdRemainder(x, y);
    GcdSymmetric(x % y, y);
    x, y := y, x % y;
  }
  g := x;
}
