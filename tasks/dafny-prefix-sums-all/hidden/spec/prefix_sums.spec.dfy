// The given specification of prefix_sums.dfy, restated: each wrapper verifies only when the program's own
// specification is at least as strong as the one the task gave.
include "../prefix_sums.dfy"

lemma SpecOf_SumLast(s: seq<int>, i: int, j: int)
  requires 0 <= i < j <= |s|
  ensures Sum(s, i, j) == Sum(s, i, j - 1) + s[j - 1]
{
  SumLast(s, i, j);
}

lemma SpecOf_SumSplit(s: seq<int>, i: int, k: int, j: int)
  requires 0 <= i <= k <= j <= |s|
  ensures Sum(s, i, j) == Sum(s, i, k) + Sum(s, k, j)
{
  SumSplit(s, i, k, j);
}

method SpecOf_PrefixSums(a: array<int>) returns (p: array<int>)
  ensures fresh(p) && p.Length == a.Length + 1
  ensures forall k :: 0 <= k <= a.Length ==> p[k] == Sum(a[..], 0, k)
{
  p := PrefixSums(a);
}

method SpecOf_RangeSum(a: array<int>, p: array<int>, i: int, j: int) returns (s: int)
  requires p.Length == a.Length + 1
  requires forall k :: 0 <= k <= a.Length ==> p[k] == Sum(a[..], 0, k)
  requires 0 <= i <= j <= a.Length
  ensures s == Sum(a[..], i, j)
{
  s := RangeSum(a, p, i, j);
}
