// The smallest element of a non-empty sequence, against its recursive definition.

function MinOf(s: seq<int>): int
  requires |s| > 0
{
  if |s| == 1 then s[0]
  else if s[|s| - 1] < MinOf(s[..|s| - 1]) then s[|s| - 1]
  else MinOf(s[..|s| - 1])
}

method Min(s: seq<int>) returns (m: int)
  requires |s| > 0
  ensures m == MinOf(s)
  ensures forall k :: 0 <= k < |s| ==> m <= s[k]
{
  m := s[0];
  var i := 1;
  while i < |s|
    invariant 1 <= i <= |s|
    invariant m == MinOf(s[..i])
    invariant forall k :: 0 <= k < i ==> m <= s[k]
  {
    assert s[..i + 1][..i] == s[..i];
    if s[i] < m {
      m := s[i];
    }
    i := i + 1;
  }
  assert s[..|s|] == s;
}
