// A stack of bounded capacity over an array, its contents a ghost sequence kept by Valid().

class BoundedStack {
  var data: array<int>
  var size: nat
  ghost var contents: seq<int>

  predicate Valid()
    reads this, data
  {
    size <= data.Length && contents == data[..size]
  }

  constructor(capacity: nat)
    ensures Valid() && fresh(data)
    ensures contents == [] && data.Length == capacity
  {
    data := new int[capacity];
    size := 0;
    contents := [];
  }

  function method IsFull(): bool
    requires Valid()
    reads this, data
  {
    size == data.Length
  }

  method Push(x: int)
    requires Valid() && |contents| < data.Length
    modifies this, data
    ensures Valid() && data == old(data)
    ensures contents == old(contents) + [x]
  {
    data[size] := x;
    size := size + 1;
    contents := contents + [x];
  }

  method Pop() returns (x: int)
    requires Valid() && |contents| > 0
    modifies this
    ensures Valid() && data == old(data)
    ensures x == old(contents)[|old(contents)| - 1]
    ensures contents == old(contents)[..|old(contents)| - 1]
  {
    size := size - 1;
    x := data[size];
    contents := contents[..size];
  }

  method Peek() returns (x: int)
    requires Valid() && |contents| > 0
    ensures x == contents[|contents| - 1]
  {
    x := data[size - 1];
  }
}

method PushAll(s: BoundedStack, xs: seq<int>)
  requires s.Valid() && |s.contents| + |xs| <= s.data.Length
  modifies s, s.data
  ensures s.Valid() && s.data == old(s.data)
  ensures s.contents == old(s.contents) + xs
{
  var i := 0;
  while i < |xs|
  {
    s.Push(xs[i]);
    i := i + 1;
  }
}

method ReverseWithStack(xs: seq<int>) returns (r: seq<int>)
  ensures |r| == |xs|
  ensures forall k :: 0 <= k < |xs| ==> r[k] == xs[|xs| - 1 - k]
{
  var s := new BoundedStack(|xs|);
  PushAll(s, xs);
  r := [];
  while s.size > 0
  {
    var x := s.Pop();
    r := r + [x];
  }
}
