// Multiplication by repeated addition and by halving and doubling (Russian peasant).

method MultiplyByAddition(a: nat, b: nat) returns (p: nat)
  ensures p == a * b
{
  p := 0;
  var i := 0;
  while i < b
    invariant 0 <= i <= b
    invariant p == a * i
  {
    p := p + a;
    i := i + 1;
  }
}

method RussianPeasant(a: nat, b: nat) returns (p: nat)
  ensures p == a * b
{
  var x, y := a, b;
  p := 0;
  while y > 0
    invariant p + x * y == a * b
    decreases y
  {
    if y % 2 == 1 {
      p := p + x;
      y := y - 1;
    }
    assert y % 2 == 0;
    assert x * y == (2 * x) * (y / 2);
    x := 2 * x;
    y := y / 2;
  }
}
