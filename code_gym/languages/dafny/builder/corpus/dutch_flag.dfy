// Three-way partition (the Dutch national flag): elements below, equal to and above a pivot.

method ThreeWayPartition(a: array<int>, pivot: int) returns (lt: int, gt: int)
  modifies a
  ensures 0 <= lt <= gt <= a.Length
  ensures forall k :: 0 <= k < lt ==> a[k] < pivot
  ensures forall k :: lt <= k < gt ==> a[k] == pivot
  ensures forall k :: gt <= k < a.Length ==> a[k] > pivot
  ensures multiset(a[..]) == multiset(old(a[..]))
{
  lt, gt := 0, a.Length;
  var i := 0;
  while i < gt
    invariant 0 <= lt <= i <= gt <= a.Length
    invariant forall k :: 0 <= k < lt ==> a[k] < pivot
    invariant forall k :: lt <= k < i ==> a[k] == pivot
    invariant forall k :: gt <= k < a.Length ==> a[k] > pivot
    invariant multiset(a[..]) == multiset(old(a[..]))
    decreases gt - i
  {
    if a[i] < pivot {
      a[lt], a[i] := a[i], a[lt];
      lt := lt + 1;
      i := i + 1;
    } else if a[i] > pivot {
      gt := gt - 1;
      a[gt], a[i] := a[i], a[gt];
    } else {
      i := i + 1;
    }
  }
}
