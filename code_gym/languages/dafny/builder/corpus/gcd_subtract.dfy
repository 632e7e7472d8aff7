// The greatest common divisor of two positive numbers by repeated subtraction.

function Gcd(a: nat, b: nat): nat
  requires a > 0 && b > 0
  decreases a + b
{
  if a == b then a
  else if a > b then Gcd(a - b, b)
  else Gcd(a, b - a)
}

lemma GcdDividesBoth(a: nat, b: nat)
  requires a > 0 && b > 0
  ensures Gcd(a, b) <= a && Gcd(a, b) <= b
  decreases a + b
{
  if a > b {
    GcdDividesBoth(a - b, b);
  } else if a < b {
    GcdDividesBoth(a, b - a);
  }
}

method SubtractGcd(a: nat, b: nat) returns (g: nat)
  requires a > 0 && b > 0
  ensures g == Gcd(a, b)
  ensures g <= a && g <= b
{
  var x, y := a, b;
  while x != y
    invariant x > 0 && y > 0
    invariant Gcd(x, y) == Gcd(a, b)
    decreases x + y
  {
    if x > y {
      x := x - y;
    } else {
      y := y - x;
    }
  }
  g := x;
  GcdDividesBoth(a, b);
}
