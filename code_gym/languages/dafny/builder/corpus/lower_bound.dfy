// Lower and upper bounds in a sorted sequence, and the number of occurrences of a value
// computed from them.

predicate Sorted(s: seq<int>)
{
  forall i, j :: 0 <= i < j < |s| ==> s[i] <= s[j]
}

method LowerBound(s: seq<int>, key: int) returns (lo: int)
  requires Sorted(s)
  ensures 0 <= lo <= |s|
  ensures forall k :: 0 <= k < lo ==> s[k] < key
  ensures forall k :: lo <= k < |s| ==> s[k] >= key
{
  lo := 0;
  var hi := |s|;
  while lo < hi
    invariant 0 <= lo <= hi <= |s|
    invariant forall k :: 0 <= k < lo ==> s[k] < key
    invariant forall k :: hi <= k < |s| ==> s[k] >= key
  {
    var mid := (lo + hi) / 2;
    if s[mid] < key {
      lo := mid + 1;
    } else {
      hi := mid;
    }
  }
}

method UpperBound(s: seq<int>, key: int) returns (lo: int)
  requires Sorted(s)
  ensures 0 <= lo <= |s|
  ensures forall k :: 0 <= k < lo ==> s[k] <= key
  ensures forall k :: lo <= k < |s| ==> s[k] > key
{
  lo := 0;
  var hi := |s|;
  while lo < hi
    invariant 0 <= lo <= hi <= |s|
    invariant forall k :: 0 <= k < lo ==> s[k] <= key
    invariant forall k :: hi <= k < |s| ==> s[k] > key
  {
    var mid := (lo + hi) / 2;
    if s[mid] <= key {
      lo := mid + 1;
    } else {
      hi := mid;
    }
  }
}

method EqualRange(s: seq<int>, key: int) returns (lo: int, hi: int)
  requires Sorted(s)
  ensures 0 <= lo <= hi <= |s|
  ensures forall k :: lo <= k < hi ==> s[k] == key
  ensures forall k :: 0 <= k < |s| && s[k] == key ==> lo <= k < hi
{
  lo := LowerBound(s, key);
  hi := UpperBound(s, key);
  assert hi < lo ==> s[hi] < key;
}
