// The factorial by a loop against its recursive definition; factorials are positive and grow.

function Fact(n: nat): nat
{
  if n == 0 then 1 else n * Fact(n - 1)
}

method Factorial(n: nat) returns (f: nat)
  ensures f == Fact(n)
{
  f := 1;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant f == Fact(i)
  {
    i := i + 1;
    f := f * i;
  }
}

lemma FactPositive(n: nat)
  ensures Fact(n) >= 1
{
  if n > 0 {
    FactPositive(n - 1);
  }
}

lemma FactMonotone(m: nat, n: nat)
  requires m <= n
  ensures Fact(m) <= Fact(n)
  decreases n - m
{
  if m < n {
    FactMonotone(m, n - 1);
    FactPositive(n - 1);
    assert Fact(n) == n * Fact(n - 1) >= Fact(n - 1);
  }
}

method FactorialAtLeast(n: nat) returns (f: nat)
  ensures f == Fact(n) && f >= n
{
  f := Factorial(n);
  if n > 0 {
    FactPositive(n - 1);
    assert f == n * Fact(n - 1);
  }
}
