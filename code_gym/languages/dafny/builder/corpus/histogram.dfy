// Count how often each value in 0..k occurs in an array (a counting sort's first pass).

function Count(s: seq<int>, v: int): nat
{
  if |s| == 0 then 0
  else Count(s[..|s| - 1], v) + (if s[|s| - 1] == v then 1 else 0)
}

method Histogram(a: array<int>, k: nat) returns (counts: array<nat>)
  requires forall i :: 0 <= i < a.Length ==> 0 <= a[i] < k
  ensures fresh(counts) && counts.Length == k
  ensures forall v :: 0 <= v < k ==> counts[v] == Count(a[..], v)
{
  counts := new nat[k];
  var v := 0;
  while v < k
    invariant 0 <= v <= k
    invariant forall w :: 0 <= w < v ==> counts[w] == 0
  {
    counts[v] := 0;
    v := v + 1;
  }
  var i := 0;
  while i < a.Length
    invariant 0 <= i <= a.Length
    invariant forall w :: 0 <= w < k ==> counts[w] == Count(a[..i], w)
  {
    assert a[..i + 1][..i] == a[..i];
    counts[a[i]] := counts[a[i]] + 1;
    i := i + 1;
  }
  assert a[..a.Length] == a[..];
}
