// Count the occurrences of a value in an array, against a recursive count over its prefix.

function Count(s: seq<int>, x: int): nat
{
  if |s| == 0 then 0
  else Count(s[..|s| - 1], x) + (if s[|s| - 1] == x then 1 else 0)
}

method CountOccurrences(a: array<int>, x: int) returns (c: nat)
  ensures c == Count(a[..], x)
{
  c := 0;
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant c == Count(a[..i], x)
  {
    assert a[..i + 1][..i] == a[..i];
    if a[i] == x {
      c := c + 1;
    }
    i := i + 1;
  }
  assert a[..a.Length] == a[..];
}

lemma CountBound(s: seq<int>, x: int)
  ensures Count(s, x) <= |s|
{
  if |s| > 0 {
    CountBound(s[..|s| - 1], x);
  }
}

method HasMajority(a: array<int>, x: int) returns (b: bool)
  ensures b <==> 2 * Count(a[..], x) > a.Length
{
  var c := CountOccurrences(a, x);
  CountBound(a[..], x);
  b := 2 * c > a.Length;
}
