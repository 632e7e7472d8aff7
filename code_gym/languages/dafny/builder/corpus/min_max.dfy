// The minimum and the maximum of an array in one pass, and the range between them.

method MinMax(a: array<int>) returns (lo: int, hi: int)
  requires a.Length > 0
  ensures forall k :: 0 <= k < a.Length ==> lo <= a[k] <= hi
  ensures exists k :: 0 <= k < a.Length && a[k] == lo
  ensures exists k :: 0 <= k < a.Length && a[k] == hi
{
  lo, hi := a[0], a[0];
  var i := 1;
  while i < a.Length
    invariant 1 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> lo <= a[k] <= hi
    invariant exists k :: 0 <= k < i && a[k] == lo
    invariant exists k :: 0 <= k < i && a[k] == hi
  {
    if a[i] < lo {
      lo := a[i];
    } else if a[i] > hi {
      hi := a[i];
    }
    i := i + 1;
  }
}

method Spread(a: array<int>) returns (d: int)
  requires a.Length > 0
  ensures d >= 0
  ensures forall i, j :: 0 <= i < a.Length && 0 <= j < a.Length ==> a[i] - a[j] <= d
{
  var lo, hi := MinMax(a);
  d := hi - lo;
  assert lo <= a[0] <= hi;
}
