// Rotate an array left: by one place in place, and by k places into a new array.

method RotateLeftOne(a: array<int>)
  requires a.Length > 0
  modifies a
  ensures a[a.Length - 1] == old(a[0])
  ensures forall k :: 0 <= k < a.Length - 1 ==> a[k] == old(a[k + 1])
{
  var first := a[0];
  var i := 0;
  while i < a.Length - 1
    invariant 0 <= i <= a.Length - 1
    invariant forall k :: 0 <= k < i ==> a[k] == old(a[k + 1])
    invariant forall k :: i < k < a.Length ==> a[k] == old(a[k])
    invariant first == old(a[0])
  {
    a[i] := a[i + 1];
    i := i + 1;
  }
  a[a.Length - 1] := first;
}

function method Wrap(i: int, n: int): int
  requires 0 <= i < 2 * n
{
  if i < n then i else i - n
}

method RotateLeft(a: array<int>, k: nat) returns (b: array<int>)
  requires k < a.Length
  ensures fresh(b) && b.Length == a.Length
  ensures forall i :: 0 <= i < a.Length ==> b[i] == a[Wrap(i + k, a.Length)]
{
  b := new int[a.Length];
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall j :: 0 <= j < i ==> b[j] == a[Wrap(j + k, a.Length)]
  {
    b[i] := a[Wrap(i + k, a.Length)];
    i := i + 1;
  }
}
