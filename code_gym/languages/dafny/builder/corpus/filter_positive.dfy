// Keep the positive elements of an array, in order, against a recursive filter.

function Positives(s: seq<int>): seq<int>
{
  if |s| == 0 then []
  else if s[|s| - 1] > 0 then Positives(s[..|s| - 1]) + [s[|s| - 1]]
  else Positives(s[..|s| - 1])
}

lemma PositivesArePositive(s: seq<int>)
  ensures forall k :: 0 <= k < |Positives(s)| ==> Positives(s)[k] > 0
  ensures |Positives(s)| <= |s|
{
  if |s| > 0 {
    PositivesArePositive(s[..|s| - 1]);
  }
}

method FilterPositive(a: array<int>) returns (r: seq<int>)
  ensures r == Positives(a[..])
  ensures forall k :: 0 <= k < |r| ==> r[k] > 0
{
  r := [];
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant r == Positives(a[..i])
  {
    assert a[..i + 1][..i] == a[..i];
    if a[i] > 0 {
      r := r + [a[i]];
    }
    i := i + 1;
  }
  assert a[..a.Length] == a[..];
  PositivesArePositive(a[..]);
}
