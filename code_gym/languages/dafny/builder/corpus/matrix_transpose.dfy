// The transpose of a matrix, and a check that a square matrix is symmetric.

method Transpose(m: array2<int>) returns (t: array2<int>)
  ensures fresh(t)
  ensures t.Length0 == m.Length1 && t.Length1 == m.Length0
  ensures forall i, j :: 0 <= i < m.Length0 && 0 <= j < m.Length1 ==> t[j, i] == m[i, j]
{
  t := new int[m.Length1, m.Length0];
  var i := 0;
  while i < m.Length0
    invariant 0 <= i <= m.Length0
    invariant forall p, q :: 0 <= p < i && 0 <= q < m.Length1 ==> t[q, p] == m[p, q]
  {
    var j := 0;
    while j < m.Length1
      invariant 0 <= j <= m.Length1
      invariant forall p, q :: 0 <= p < i && 0 <= q < m.Length1 ==> t[q, p] == m[p, q]
      invariant forall q :: 0 <= q < j ==> t[q, i] == m[i, q]
    {
      t[j, i] := m[i, j];
      j := j + 1;
    }
    i := i + 1;
  }
}

predicate Symmetric(m: array2<int>)
  reads m
{
  m.Length0 == m.Length1 && forall i, j :: 0 <= i < m.Length0 && 0 <= j < m.Length1 ==> m[i, j] == m[j, i]
}

method IsSymmetric(m: array2<int>) returns (b: bool)
  ensures b <==> Symmetric(m)
{
  if m.Length0 != m.Length1 {
    return false;
  }
  var i := 0;
  while i < m.Length0
    invariant 0 <= i <= m.Length0
    invariant forall p, q :: 0 <= p < i && 0 <= q < m.Length1 ==> m[p, q] == m[q, p]
  {
    var j := 0;
    while j < m.Length1
      invariant 0 <= j <= m.Length1
      invariant forall q :: 0 <= q < j ==> m[i, q] == m[q, i]
    {
      if m[i, j] != m[j, i] {
        return false;
      }
      j := j + 1;
    }
    i := i + 1;
  }
  return true;
}
