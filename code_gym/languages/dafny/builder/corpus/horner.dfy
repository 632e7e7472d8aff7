// Evaluating a polynomial by Horner's rule, from the highest coefficient down, against its
// recursive definition from the lowest: c[lo] + x * (c[lo + 1] + x * (...)).

function Poly(c: seq<int>, x: int, lo: nat): int
  requires lo <= |c|
  decreases |c| - lo
{
  if lo == |c| then 0 else c[lo] + x * Poly(c, x, lo + 1)
}

method Horner(c: seq<int>, x: int) returns (v: int)
  ensures v == Poly(c, x, 0)
{
  v := 0;
  var i := |c|;
  while i > 0
    invariant 0 <= i <= |c|
    invariant v == Poly(c, x, i)
  {
    i := i - 1;
    v := c[i] + x * v;
  }
}

lemma PolyOfZeros(c: seq<int>, x: int, lo: nat)
  requires lo <= |c|
  requires forall k :: lo <= k < |c| ==> c[k] == 0
  ensures Poly(c, x, lo) == 0
  decreases |c| - lo
{
  if lo < |c| {
    PolyOfZeros(c, x, lo + 1);
  }
}

method EvalWithZeros(c: seq<int>, x: int) returns (v: int)
  requires forall k :: 0 <= k < |c| ==> c[k] == 0
  ensures v == 0
{
  v := Horner(c, x);
  PolyOfZeros(c, x, 0);
}
