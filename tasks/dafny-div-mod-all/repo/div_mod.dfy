// Division with remainder by repeated subtraction, and divisibility decided by the remainder.

method DivMod(n: nat, d: nat) returns (q: nat, r: nat)
  requires d > 0
  ensures n == q * d + r && 0 <= r < d
{
  q, r := 0, n;
  while r >= d
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
}

method IsDivisible(n: nat, d: nat) returns (b: bool)
  requires d > 0
  ensures b <==> Divides(d, n)
{
  var q, r := DivMod(n, d);
  if r == 0 {
    b := true;
  } else {
    b := false;
  }
}
