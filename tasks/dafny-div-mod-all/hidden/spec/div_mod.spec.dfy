// The given specification of div_mod.dfy, restated: each wrapper verifies only when the program's own
// specification is at least as strong as the one the task gave.
include "../div_mod.dfy"

method SpecOf_DivMod(n: nat, d: nat) returns (q: nat, r: nat)
  requires d > 0
  ensures n == q * d + r && 0 <= r < d
{
  q, r := DivMod(n, d);
}

lemma SpecOf_RemainderRulesOutDivisor(n: nat, d: nat, q: nat, r: nat)
  requires d > 0 && n == q * d + r && 0 < r < d
  ensures !Divides(d, n)
{
  RemainderRulesOutDivisor(n, d, q, r);
}

method SpecOf_IsDivisible(n: nat, d: nat) returns (b: bool)
  requires d > 0
  ensures b <==> Divides(d, n)
{
  b := IsDivisible(n, d);
}
