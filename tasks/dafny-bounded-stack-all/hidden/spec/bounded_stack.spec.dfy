// The given specification of bounded_stack.dfy, restated: each wrapper verifies only when the program's own
// specification is at least as strong as the one the task gave.
include "../bounded_stack.dfy"

method SpecOf_PushAll(s: BoundedStack, xs: seq<int>)
  requires s.Valid() && |s.contents| + |xs| <= s.data.Length
  modifies s, s.data
  ensures s.Valid() && s.data == old(s.data)
  ensures s.contents == old(s.contents) + xs
{
  PushAll(s, xs);
}

method SpecOf_ReverseWithStack(xs: seq<int>) returns (r: seq<int>)
  ensures |r| == |xs|
  ensures forall k :: 0 <= k < |xs| ==> r[k] == xs[|xs| - 1 - k]
{
  r := ReverseWithStack(xs);
}
