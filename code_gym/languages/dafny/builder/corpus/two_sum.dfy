// Two indices of a sorted array whose elements add up to a target, found from both ends.

predicate Sorted(a: array<int>)
  reads a
{
  forall i, j :: 0 <= i < j < a.Length ==> a[i] <= a[j]
}

method TwoSum(a: array<int>, target: int) returns (found: bool, i: int, j: int)
  requires Sorted(a)
  ensures found ==> 0 <= i < j < a.Length && a[i] + a[j] == target
  ensures !found ==> forall p, q :: 0 <= p < q < a.Length ==> a[p] + a[q] != target
{
  i := 0;
  j := a.Length - 1;
  while i < j
    invariant 0 <= i && j < a.Length && i <= j + 1
    invariant forall p, q :: 0 <= p < q < a.Length && (p < i || q > j) ==> a[p] + a[q] != target
  {
    var sum := a[i] + a[j];
    if sum == target {
      return true, i, j;
    } else if sum < target {
      assert forall q :: i < q <= j ==> a[i] + a[q] <= sum;
      i := i + 1;
    } else {
      assert forall p :: i <= p < j ==> a[p] + a[j] >= sum;
      j := j - 1;
    }
  }
  found := false;
}
