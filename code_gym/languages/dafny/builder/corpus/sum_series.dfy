// Sums of series by loops, against recursive definitions and their closed forms:
// 1 + ... + n, the first n odd numbers, and the first n squares.

function SumTo(n: nat): nat
{
  if n == 0 then 0 else n + SumTo(n - 1)
}

lemma Gauss(n: nat)
  ensures 2 * SumTo(n) == n * (n + 1)
{
  if n > 0 {
    Gauss(n - 1);
  }
}

method SumLoop(n: nat) returns (s: nat)
  ensures s == SumTo(n)
  ensures 2 * s == n * (n + 1)
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == SumTo(i)
  {
    i := i + 1;
    s := s + i;
  }
  Gauss(n);
}

function SumOdds(n: nat): nat
{
  if n == 0 then 0 else (2 * n - 1) + SumOdds(n - 1)
}

method OddSum(n: nat) returns (s: nat)
  ensures s == SumOdds(n)
  ensures s == n * n
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == SumOdds(i)
    invariant s == i * i
  {
    s := s + 2 * i + 1;
    i := i + 1;
  }
}

function SumSquares(n: nat): nat
{
  if n == 0 then 0 else n * n + SumSquares(n - 1)
}

lemma SquaresClosedForm(n: nat)
  ensures 6 * SumSquares(n) == n * (n + 1) * (2 * n + 1)
{
  if n > 0 {
    SquaresClosedForm(n - 1);
    assert (n - 1) * n * (2 * n - 1) + 6 * n * n == n * (n + 1) * (2 * n + 1);
  }
}

method SquareSum(n: nat) returns (s: nat)
  ensures s == SumSquares(n)
  ensures 6 * s == n * (n + 1) * (2 * n + 1)
{
  s := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n
    invariant s == SumSquares(i)
  {
    i := i + 1;
    s := s + i * i;
  }
  SquaresClosedForm(n);
}
