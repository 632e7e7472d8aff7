// Reverse a sequence by prepending, against a recursive specification.

function Rev(s: seq<int>): seq<int>
{
  if |s| == 0 then [] else [s[|s| - 1]] + Rev(s[..|s| - 1])
}

lemma RevLength(s: seq<int>)
  ensures |Rev(s)| == |s|
{
  if |s| > 0 {
    RevLength(s[..|s| - 1]);
  }
}

lemma RevIndex(s: seq<int>, k: int)
  requires 0 <= k < |s|
  ensures |Rev(s)| == |s|
  ensures Rev(s)[k] == s[|s| - 1 - k]
{
  RevLength(s);
  if k > 0 {
    RevIndex(s[..|s| - 1], k - 1);
  }
}

method ReverseSeq(s: seq<int>) returns (r: seq<int>)
  ensures r == Rev(s)
  ensures |r| == |s|
{
  r := [];
  var i := 0;
  while i < |s|
    invariant 0 <= i <= |s|
    invariant r == Rev(s[..i])
  {
    assert s[..i + 1][..i] == s[..i];
    r := [s[i]] + r;
    i := i + 1;
  }
  assert s[..|s|] == s;
  RevLength(s);
}

method LastElement(s: seq<int>) returns (x: int)
  requires |s| > 0
  ensures x == s[|s| - 1]
{
  var r := ReverseSeq(s);
  RevIndex(s, 0);
  x := r[0];
}
