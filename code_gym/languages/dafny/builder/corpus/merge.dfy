// Merge two sorted sequences into one sorted sequence holding exactly their elements.

predicate Sorted(s: seq<int>)
{
  forall i, j :: 0 <= i < j < |s| ==> s[i] <= s[j]
}

method Merge(a: seq<int>, b: seq<int>) returns (r: seq<int>)
  requires Sorted(a) && Sorted(b)
  ensures Sorted(r)
  ensures multiset(r) == multiset(a) + multiset(b)
{
  var i, j := 0, 0;
  r := [];
  while i < |a| || j < |b|
    invariant 0 <= i <= |a| && 0 <= j <= |b|
    invariant Sorted(r)
    invariant multiset(r) == multiset(a[..i]) + multiset(b[..j])
    invariant |r| > 0 && i < |a| ==> r[|r| - 1] <= a[i]
    invariant |r| > 0 && j < |b| ==> r[|r| - 1] <= b[j]
    decreases |a| - i + |b| - j
  {
    if j == |b| || (i < |a| && a[i] <= b[j]) {
      assert a[..i + 1] == a[..i] + [a[i]];
      r := r + [a[i]];
      i := i + 1;
    } else {
      assert b[..j + 1] == b[..j] + [b[j]];
      r := r + [b[j]];
      j := j + 1;
    }
  }
  assert a[..|a|] == a;
  assert b[..|b|] == b;
}
