// The given specification of binary_search.dfy, restated: each wrapper verifies only when the program's own
// specification is at least as strong as the one the task gave.
include "../binary_search.dfy"

method SpecOf_BinarySearch(a: array<int>, key: int) returns (index: int)
  requires Sorted(a)
  ensures -1 <= index < a.Length
  ensures 0 <= index ==> a[index] == key
  ensures index == -1 ==> forall k :: 0 <= k < a.Length ==> a[k] != key
{
  index := BinarySearch(a, key);
}
