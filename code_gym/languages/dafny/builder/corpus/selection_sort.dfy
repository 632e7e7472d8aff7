// Selection sort: repeatedly swap the smallest remaining element into place.

predicate Sorted(a: array<int>, lo: int, hi: int)
  requires 0 <= lo <= hi <= a.Length
  reads a
{
  forall i, j :: lo <= i < j < hi ==> a[i] <= a[j]
}

method SelectionSort(a: array<int>)
  modifies a
  ensures Sorted(a, 0, a.Length)
  ensures multiset(a[..]) == multiset(old(a[..]))
{
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant Sorted(a, 0, i)
    invariant forall p, q :: 0 <= p < i <= q < a.Length ==> a[p] <= a[q]
    invariant multiset(a[..]) == multiset(old(a[..]))
  {
    var m := i;
    var j := i + 1;
    while j < a.Length
      invariant i <= m < a.Length
      invariant i + 1 <= j <= a.Length
      invariant forall k :: i <= k < j ==> a[m] <= a[k]
    {
      if a[j] < a[m] {
        m := j;
      }
      j := j + 1;
    }
    a[i], a[m] := a[m], a[i];
    i := i + 1;
  }
}
