// Division with remainder by repeated subtraction, and divisibility decided by the remainder.

method DivMod(n: nat, d: nat) returns (q: nat, r: nat)
  requires d > 0
  ensures n == q * d + r && 0 <= r < d
{
  q, r := 0, n;
  while r >= d
    invariant n == q * d + r
    decreases r
  {
    q := q + 1;
    r := r - d;
  }
}

predicate Divides(d: nat, n: nat)
{
  exists k: nat :: n == k * d
}

lemma RemainderRulesOutDivisor(n: nat, d: nat, q: nat, r: nat)
  requires d > 0 && n == q * d + r && 0 < r < d
  ensures !Divides(d, n)
{
  if Divides(d, n) {
    var k: nat :| n == k * d;
    assert (k - q) * d == r;
    if k > q {
      assert (k - q) * d >= d;
    } else {
      assert (k - q) * d <= 0;
    }
  }
}

method IsDivisible(n: nat, d: nat) returns (b: bool)
  requires d > 0
  ensures b <==> Divides(d, n)
{
  var q, r := DivMod(n, d);
  if r == 0 {
    assert n == q * d;
    b := true;
  } else {
    RemainderRulesOutDivisor(n, d, q, r);
    b := false;
  }
}
