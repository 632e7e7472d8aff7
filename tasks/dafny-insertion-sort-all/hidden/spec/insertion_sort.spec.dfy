// The given specification of insertion_sort.dfy, restated: each wrapper verifies only when the program's own
// specification is at least as strong as the one the task gave.
include "../insertion_sort.dfy"

method SpecOf_InsertionSort(a: array<int>)
  modifies a
  ensures Sorted(a[..])
  ensures multiset(a[..]) == multiset(old(a[..]))
{
  InsertionSort(a);
}
