// Linear search: the first index of a key in an array, or -1 when the key is absent.

method LinearSearch(a: array<int>, key: int) returns (index: int)
  ensures -1 <= index < a.Length
  ensures index == -1 ==> forall k :: 0 <= k < a.Length ==> a[k] != key
  ensures 0 <= index ==> a[index] == key && forall k :: 0 <= k < index ==> a[k] != key
{
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall k :: 0 <= k < i ==> a[k] != key
  {
    if a[i] == key {
      return i;
    }
    i := i + 1;
  }
  return -1;
}

// The last index of a key, searching from the end.
method LastIndexOf(a: array<int>, key: int) returns (index: int)
  ensures -1 <= index < a.Length
  ensures index == -1 ==> forall k :: 0 <= k < a.Length ==> a[k] != key
  ensures 0 <= index ==> a[index] == key && forall k :: index < k < a.Length ==> a[k] != key
{
  var i := a.Length;
  while i > 0
    invariant 0 <= i <= a.Length
    invariant forall k :: i <= k < a.Length ==> a[k] != key
  {
    i := i - 1;
    if a[i] == key {
      return i;
    }
  }
  return -1;
}
