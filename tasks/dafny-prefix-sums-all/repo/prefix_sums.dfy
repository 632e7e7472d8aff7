// Prefix sums of an array, and the sum of any slice answered from them.

function Sum(s: seq<int>, i: int, j: int): int
  requires 0 <= i <= j <= |s|
  decreases j - i
{
  if i == j then 0 else s[i] + Sum(s, i + 1, j)
}

lemma SumLast(s: seq<int>, i: int, j: int)
  requires 0 <= i < j <= |s|
  ensures Sum(s, i, j) == Sum(s, i, j - 1) + s[j - 1]
  decreases j - i
{
  if i < j - 1 {
    SumLast(s, i + 1, j);
  }
}

lemma SumSplit(s: seq<int>, i: int, k: int, j: int)
  requires 0 <= i <= k <= j <= |s|
  ensures Sum(s, i, j) == Sum(s, i, k) + Sum(s, k, j)
  decreases k - i
{
  if i < k {
    SumSplit(s, i + 1, k, j);
  }
}

method PrefixSums(a: array<int>) returns (p: array<int>)
  ensures fresh(p) && p.Length == a.Length + 1
  ensures forall k :: 0 <= k <= a.Length ==> p[k] == Sum(a[..], 0, k)
{
  p := new int[a.Length + 1];
  p[0] := 0;
  var i := 0;
  while i < a.Length
  {
    p[i + 1] := p[i] + a[i];
    i := i + 1;
  }
}

method RangeSum(a: array<int>, p: array<int>, i: int, j: int) returns (s: int)
  requires p.Length == a.Length + 1
  requires forall k :: 0 <= k <= a.Length ==> p[k] == Sum(a[..], 0, k)
  requires 0 <= i <= j <= a.Length
  ensures s == Sum(a[..], i, j)
{
  s := p[j] - p[i];
}
