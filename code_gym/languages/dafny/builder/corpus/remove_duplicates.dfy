// The distinct elements of a sorted sequence, in order: a strictly increasing sequence with the
// same elements.

predicate Sorted(s: seq<int>)
{
  forall i, j :: 0 <= i < j < |s| ==> s[i] <= s[j]
}

predicate StrictlySorted(s: seq<int>)
{
  forall i, j :: 0 <= i < j < |s| ==> s[i] < s[j]
}

method Dedup(s: seq<int>) returns (r: seq<int>)
  requires Sorted(s)
  ensures StrictlySorted(r)
  ensures forall x :: x in r <==> x in s
{
  if |s| == 0 {
    return [];
  }
  r := [s[0]];
  var i := 1;
  while i < |s|
    invariant 1 <= i <= |s|
    invariant |r| > 0 && r[|r| - 1] == s[i - 1]
    invariant StrictlySorted(r)
    invariant forall x :: x in r <==> x in s[..i]
  {
    assert s[..i + 1] == s[..i] + [s[i]];
    if s[i] != r[|r| - 1] {
      r := r + [s[i]];
    }
    i := i + 1;
  }
  assert s[..|s|] == s;
}

method CountDistinct(s: seq<int>) returns (n: nat)
  requires Sorted(s)
  ensures n == |set x | x in s|
{
  var r := Dedup(s);
  DistinctCount(r);
  assert (set x | x in r) == (set x | x in s);
  n := |r|;
}

lemma DistinctCount(r: seq<int>)
  requires StrictlySorted(r)
  ensures |set x | x in r| == |r|
{
  if |r| > 0 {
    var last := r[|r| - 1];
    var init := r[..|r| - 1];
    DistinctCount(init);
    assert r == init + [last];
    assert last !in init;
    assert (set x | x in r) == (set x | x in init) + {last};
  }
}
