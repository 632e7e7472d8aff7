// Bubble sort: each pass carries the largest remaining element to the end of the unsorted part.

predicate Sorted(a: array<int>, lo: int, hi: int)
  requires 0 <= lo <= hi <= a.Length
  reads a
{
  forall i, j :: lo <= i < j < hi ==> a[i] <= a[j]
}

method BubbleSort(a: array<int>)
  modifies a
  ensures Sorted(a, 0, a.Length)
  ensures multiset(a[..]) == multiset(old(a[..]))
{
  var n := a.Length;
  while n > 1
    invariant 0 <= n <= a.Length
    invariant Sorted(a, n, a.Length)
    invariant forall p, q :: 0 <= p < n <= q < a.Length ==> a[p] <= a[q]
    invariant multiset(a[..]) == multiset(old(a[..]))
  {
    var j := 0;
    while j < n - 1
      invariant 0 <= j <= n - 1
      invariant forall k :: 0 <= k <= j ==> a[k] <= a[j]
      invariant Sorted(a, n, a.Length)
      invariant forall p, q :: 0 <= p < n <= q < a.Length ==> a[p] <= a[q]
      invariant multiset(a[..]) == multiset(old(a[..]))
    {
      if a[j] > a[j + 1] {
        a[j], a[j + 1] := a[j + 1], a[j];
      }
      j := j + 1;
    }
    n := n - 1;
  }
}
