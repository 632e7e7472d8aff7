// The given specification of array_max.dfy, restated: each wrapper verifies only when the program's own
// specification is at least as strong as the one the task gave.
include "../array_max.dfy"

method SpecOf_MaxIndex(a: array<int>) returns (m: int)
  requires a.Length > 0
  ensures 0 <= m < a.Length
  ensures forall k :: 0 <= k < a.Length ==> a[k] <= a[m]
  ensures forall k :: 0 <= k < m ==> a[k] < a[m]
{
  m := MaxIndex(a);
}

method SpecOf_Max(a: array<int>) returns (max: int)
  requires a.Length > 0
  ensures forall k :: 0 <= k < a.Length ==> a[k] <= max
  ensures exists k :: 0 <= k < a.Length && a[k] == max
{
  max := Max(a);
}
