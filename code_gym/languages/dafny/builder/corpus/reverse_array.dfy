// Reverse an array in place by swapping from both ends.

method Reverse(a: array<int>)
  modifies a
  ensures forall k :: 0 <= k < a.Length ==> a[k] == old(a[a.Length - 1 - k])
{
  var i := 0;
  var j := a.Length - 1;
  while i < j
    invariant 0 <= i <= a.Length
    invariant j == a.Length - 1 - i
    invariant i <= j + 1
    invariant forall k :: 0 <= k < i ==> a[k] == old(a[a.Length - 1 - k])
    invariant forall k :: j < k < a.Length ==> a[k] == old(a[a.Length - 1 - k])
    invariant forall k :: i <= k <= j ==> a[k] == old(a[k])
  {
    a[i], a[j] := a[j], a[i];
    i := i + 1;
    j := j - 1;
  }
}

// Reversing into a new array.
method Reversed(a: array<int>) returns (b: array<int>)
  ensures fresh(b) && b.Length == a.Length
  ensures forall k :: 0 <= k < a.Length ==> b[k] == a[a.Length - 1 - k]
{
  b := new int[a.Length];
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> b[k] == a[a.Length - 1 - k]
  {
    b[i] := a[a.Length - 1 - i];
    i := i + 1;
  }
}
