// The largest element of a non-empty array and the first index where it occurs.

method MaxIndex(a: array<int>) returns (m: int)
  requires a.Length > 0
  ensures 0 <= m < a.Length
  ensures forall k :: 0 <= k < a.Length ==> a[k] <= a[m]
  ensures forall k :: 0 <= k < m ==> a[k] < a[m]
{
  m := 0;
  var i := 1;
  while i < a.Length
  {
    if a[i] > a[m] {
      m := i;
    }
    i := i + 1;
  }
}

method Max(a: array<int>) returns (max: int)
  requires a.Length > 0
  ensures forall k :: 0 <= k < a.Length ==> a[k] <= max
  ensures exists k :: 0 <= k < a.Length && a[k] == max
{
  var m := MaxIndex(a);
  max := a[m];
}
