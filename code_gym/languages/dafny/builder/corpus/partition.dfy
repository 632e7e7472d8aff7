// Partition an array in place around a pivot: the smaller elements first, nothing lost or added.

method Partition(a: array<int>, pivot: int) returns (m: int)
  modifies a
  ensures 0 <= m <= a.Length
  ensures forall k :: 0 <= k < m ==> a[k] < pivot
  ensures forall k :: m <= k < a.Length ==> a[k] >= pivot
  ensures multiset(a[..]) == multiset(old(a[..]))
{
  m := 0;
  var i := 0;
  while i < a.Length
    invariant 0 <= m <= i <= a.Length
    invariant forall k :: 0 <= k < m ==> a[k] < pivot
    invariant forall k :: m <= k < i ==> a[k] >= pivot
    invariant multiset(a[..]) == multiset(old(a[..]))
  {
    if a[i] < pivot {
      a[m], a[i] := a[i], a[m];
      m := m + 1;
    }
    i := i + 1;
  }
}
