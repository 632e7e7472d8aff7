// Fibonacci numbers by a loop over pairs, against the exponential recursive definition.

function Fib(n: nat): nat
{
  if n < 2 then n else Fib(n - 1) + Fib(n - 2)
}

method FibIterative(n: nat) returns (f: nat)
  ensures f == Fib(n)
{
  var a, b := 0, 1;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant a == Fib(i) && b == Fib(i + 1)
  {
    a, b := b, a + b;
    i := i + 1;
  }
  f := a;
}

lemma FibMonotone(m: nat, n: nat)
  requires m <= n
  ensures Fib(m) <= Fib(n)
  decreases n - m
{
  if m < n {
    FibMonotone(m, n - 1);
    if n >= 2 {
      assert Fib(n) == Fib(n - 1) + Fib(n - 2);
    }
  }
}

method FibSum(n: nat) returns (s: nat)
  ensures s + 1 == Fib(n + 2)
{
  s := 0;
  var a, b := 0, 1;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant a == Fib(i) && b == Fib(i + 1)
    invariant s + 1 == Fib(i + 2)
  {
    s := s + b;
    a, b := b, a + b;
    i := i + 1;
  }
}
