// The sum of a sequence, specified from the front and computed from the back of a growing prefix.

function SeqSum(s: seq<int>): int
{
  if |s| == 0 then 0 else s[0] + SeqSum(s[1..])
}

lemma SeqSumAppend(s: seq<int>, x: int)
  ensures SeqSum(s + [x]) == SeqSum(s) + x
{
  if |s| > 0 {
    assert (s + [x])[1..] == s[1..] + [x];
    SeqSumAppend(s[1..], x);
  }
}

method ArraySum(a: array<int>) returns (total: int)
  ensures total == SeqSum(a[..])
{
  total := 0;
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant total == SeqSum(a[..i])
  {
    assert a[..i + 1] == a[..i] + [a[i]];
    SeqSumAppend(a[..i], a[i]);
    total := total + a[i];
    i := i + 1;
  }
  assert a[..a.Length] == a[..];
}

lemma SeqSumNonNegative(s: seq<int>)
  requires forall k :: 0 <= k < |s| ==> s[k] >= 0
  ensures SeqSum(s) >= 0
{
  if |s| > 0 {
    SeqSumNonNegative(s[1..]);
  }
}

method SumOfNaturals(a: array<int>) returns (total: int)
  requires forall k :: 0 <= k < a.Length ==> a[k] >= 0
  ensures total >= 0
{
  total := ArraySum(a);
  SeqSumNonNegative(a[..]);
}
