// Naive substring search: the first position where a pattern occurs in a text, or -1.

predicate MatchesAt(text: seq<char>, pattern: seq<char>, i: int)
  requires 0 <= i
{
  i + |pattern| <= |text| && text[i..i + |pattern|] == pattern
}

method MatchAt(text: seq<char>, pattern: seq<char>, i: nat) returns (b: bool)
  requires i + |pattern| <= |text|
  ensures b <==> MatchesAt(text, pattern, i)
{
  var k := 0;
  while k < |pattern|
    invariant 0 <= k <= |pattern|
    invariant forall m :: 0 <= m < k ==> text[i + m] == pattern[m]
  {
    if text[i + k] != pattern[k] {
      assert text[i..i + |pattern|][k] != pattern[k];
      return false;
    }
    k := k + 1;
  }
  assert text[i..i + |pattern|] == pattern;
  return true;
}

method Find(text: seq<char>, pattern: seq<char>) returns (pos: int)
  ensures -1 <= pos <= |text|
  ensures pos >= 0 ==> MatchesAt(text, pattern, pos)
  ensures pos >= 0 ==> forall j :: 0 <= j < pos ==> !MatchesAt(text, pattern, j)
  ensures pos == -1 ==> forall j :: 0 <= j <= |text| ==> !MatchesAt(text, pattern, j)
{
  if |pattern| > |text| {
    return -1;
  }
  var i := 0;
  while i + |pattern| <= |text|
    invariant 0 <= i <= |text| - |pattern| + 1
    invariant forall j :: 0 <= j < i ==> !MatchesAt(text, pattern, j)
  {
    var b := MatchAt(text, pattern, i);
    if b {
      return i;
    }
    i := i + 1;
  }
  return -1;
}
