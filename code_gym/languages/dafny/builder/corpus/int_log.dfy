// The integer base-2 logarithm of a positive number by repeated halving.

function Pow2(k: nat): nat
{
  if k == 0 then 1 else 2 * Pow2(k - 1)
}

lemma Pow2Positive(k: nat)
  ensures Pow2(k) >= 1
{
  if k > 0 {
    Pow2Positive(k - 1);
  }
}

method Log2(n: nat) returns (r: nat)
  requires n >= 1
  ensures Pow2(r) <= n < Pow2(r + 1)
{
  var m := n;
  r := 0;
  while m > 1
    invariant m >= 1
    invariant Pow2(r) * m <= n < Pow2(r) * (m + 1)
    decreases m
  {
    Pow2Positive(r);
    assert Pow2(r + 1) == 2 * Pow2(r);
    assert Pow2(r) * m == Pow2(r + 1) * (m / 2) + Pow2(r) * (m % 2);
    m := m / 2;
    r := r + 1;
  }
  assert Pow2(r + 1) == 2 * Pow2(r);
}
