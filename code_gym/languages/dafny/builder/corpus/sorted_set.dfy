// A set of integers kept as a strictly increasing sequence: membership by bisection,
// insertion and removal that keep the order, and the union of two sets.

predicate StrictlySorted(s: seq<int>)
{
  forall i, j :: 0 <= i < j < |s| ==> s[i] < s[j]
}

method Contains(s: seq<int>, x: int) returns (found: bool)
  requires StrictlySorted(s)
  ensures found <==> x in s
{
  var lo, hi := 0, |s|;
  while lo < hi
    invariant 0 <= lo <= hi <= |s|
    invariant forall k :: 0 <= k < lo ==> s[k] < x
    invariant forall k :: hi <= k < |s| ==> s[k] > x
  {
    var mid := (lo + hi) / 2;
    if s[mid] < x {
      lo := mid + 1;
    } else if s[mid] > x {
      hi := mid;
    } else {
      return true;
    }
  }
  return false;
}

method Insert(s: seq<int>, x: int) returns (t: seq<int>)
  requires StrictlySorted(s)
  ensures StrictlySorted(t)
  ensures forall y :: y in t <==> y in s || y == x
{
  var i := 0;
  while i < |s| && s[i] < x
    invariant 0 <= i <= |s|
    invariant forall k :: 0 <= k < i ==> s[k] < x
  {
    i := i + 1;
  }
  if i < |s| && s[i] == x {
    return s;
  }
  t := s[..i] + [x] + s[i..];
  assert s == s[..i] + s[i..];
}

method Remove(s: seq<int>, x: int) returns (t: seq<int>)
  requires StrictlySorted(s)
  ensures StrictlySorted(t)
  ensures forall y :: y in t <==> y in s && y != x
{
  var i := 0;
  while i < |s| && s[i] != x
    invariant 0 <= i <= |s|
    invariant forall k :: 0 <= k < i ==> s[k] != x
  {
    i := i + 1;
  }
  if i == |s| {
    return s;
  }
  t := s[..i] + s[i + 1..];
  assert s == s[..i] + [x] + s[i + 1..];
}

method Union(a: seq<int>, b: seq<int>) returns (c: seq<int>)
  requires StrictlySorted(a) && StrictlySorted(b)
  ensures StrictlySorted(c)
  ensures forall y :: y in c <==> y in a || y in b
{
  c := a;
  var i := 0;
  while i < |b|
    invariant 0 <= i <= |b|
    invariant StrictlySorted(c)
    invariant forall y :: y in c <==> y in a || y in b[..i]
  {
    assert b[..i + 1] == b[..i] + [b[i]];
    c := Insert(c, b[i]);
    i := i + 1;
  }
  assert b[..|b|] == b;
}
