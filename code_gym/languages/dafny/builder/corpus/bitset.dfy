// A set of small natural numbers as an array of booleans, with a ghost set kept by Valid() and
// a count of its members.

class BitSet {
  var bits: array<bool>
  var size: nat
  ghost var elements: set<nat>

  predicate Valid()
    reads this, bits
  {
    (forall v :: v in elements ==> v < bits.Length) &&
    (forall v :: 0 <= v < bits.Length ==> (bits[v] <==> v in elements)) &&
    size == |elements|
  }

  constructor(universe: nat)
    ensures Valid() && fresh(bits) && elements == {} && bits.Length == universe
  {
    bits := new bool[universe](_ => false);
    size := 0;
    elements := {};
  }

  method Add(v: nat)
    requires Valid() && v < bits.Length
    modifies this, bits
    ensures Valid() && bits == old(bits)
    ensures elements == old(elements) + {v}
  {
    if !bits[v] {
      bits[v] := true;
      assert v !in elements;
      elements := elements + {v};
      size := size + 1;
    }
  }

  method Remove(v: nat)
    requires Valid() && v < bits.Length
    modifies this, bits
    ensures Valid() && bits == old(bits)
    ensures elements == old(elements) - {v}
  {
    if bits[v] {
      bits[v] := false;
      assert v in elements;
      elements := elements - {v};
      size := size - 1;
    }
  }

  method Contains(v: nat) returns (b: bool)
    requires Valid()
    ensures b <==> v in elements
  {
    b := v < bits.Length && bits[v];
  }
}

method AddAll(s: BitSet, xs: seq<nat>)
  requires s.Valid() && forall k :: 0 <= k < |xs| ==> xs[k] < s.bits.Length
  modifies s, s.bits
  ensures s.Valid() && s.bits == old(s.bits)
  ensures forall k :: 0 <= k < |xs| ==> xs[k] in s.elements
  ensures old(s.elements) <= s.elements
{
  var i := 0;
  while i < |xs|
    invariant 0 <= i <= |xs|
    invariant s.Valid() && s.bits == old(s.bits)
    invariant forall k :: 0 <= k < i ==> xs[k] in s.elements
    invariant old(s.elements) <= s.elements
  {
    s.Add(xs[i]);
    i := i + 1;
  }
}
