// Decide whether a sequence reads the same backwards, comparing from both ends.

predicate IsPalindrome(s: seq<int>)
{
  forall k :: 0 <= k < |s| ==> s[k] == s[|s| - 1 - k]
}

method CheckPalindrome(s: seq<int>) returns (result: bool)
  ensures result <==> IsPalindrome(s)
{
  var i := 0;
  var j := |s| - 1;
  while i < j
    invariant 0 <= i <= |s|
    invariant j == |s| - 1 - i
    invariant forall k :: 0 <= k < i ==> s[k] == s[|s| - 1 - k]
  {
    if s[i] != s[j] {
      return false;
    }
    i := i + 1;
    j := j - 1;
  }
  assert forall k :: i <= k < |s| ==> s[|s| - 1 - k] == s[|s| - 1 - (|s| - 1 - k)];
  return true;
}
