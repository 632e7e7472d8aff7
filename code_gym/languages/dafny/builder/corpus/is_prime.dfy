// Primality by trial division, with the remainder defined by repeated subtraction, and the
// smallest divisor above one (which is prime).

function method Rem(n: nat, d: nat): nat
  requires d > 0
  decreases n
{
  if n < d then n else Rem(n - d, d)
}

predicate IsPrime(n: nat)
{
  n >= 2 && forall d :: 2 <= d < n ==> Rem(n, d) != 0
}

method CheckPrime(n: nat) returns (prime: bool)
  ensures prime <==> IsPrime(n)
{
  if n < 2 {
    return false;
  }
  var d := 2;
  while d < n
    invariant 2 <= d <= n
    invariant forall k :: 2 <= k < d ==> Rem(n, k) != 0
  {
    if Rem(n, d) == 0 {
      return false;
    }
    d := d + 1;
  }
  return true;
}

lemma RemOfSum(a: nat, b: nat, k: nat)
  requires k > 0 && Rem(b, k) == 0
  ensures Rem(a + b, k) == Rem(a, k)
  decreases b
{
  if b >= k {
    RemOfSum(a, b - k, k);
    assert Rem(a + b, k) == Rem(a + (b - k), k);
  } else {
    assert b == 0;
  }
}

lemma DivisorTransitive(n: nat, d: nat, k: nat)
  requires k > 0 && d > 0 && Rem(n, d) == 0 && Rem(d, k) == 0
  ensures Rem(n, k) == 0
  decreases n
{
  if n >= d {
    DivisorTransitive(n - d, d, k);
    RemOfSum(n - d, d, k);
  }
}

method SmallestDivisor(n: nat) returns (d: nat)
  requires n >= 2
  ensures 2 <= d <= n && Rem(n, d) == 0
  ensures forall k :: 2 <= k < d ==> Rem(n, k) != 0
  ensures IsPrime(d)
{
  d := 2;
  while Rem(n, d) != 0
    invariant 2 <= d <= n
    invariant forall k :: 2 <= k < d ==> Rem(n, k) != 0
    decreases n - d
  {
    assert Rem(n, n) == 0;
    d := d + 1;
  }
  forall k | 2 <= k < d
    ensures Rem(d, k) != 0
  {
    if Rem(d, k) == 0 {
      DivisorTransitive(n, d, k);
    }
  }
}
