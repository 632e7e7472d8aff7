// A FIFO queue in a ring buffer: a fixed array, a head index that wraps around, and a count;
// Valid() ties the ghost contents to the array.

function method Wrap(i: int, n: int): int
  requires 0 <= i < 2 * n
{
  if i < n then i else i - n
}

class RingBuffer {
  var data: array<int>
  var head: nat
  var count: nat
  ghost var contents: seq<int>

  predicate Valid()
    reads this, data
  {
    0 < data.Length && head < data.Length && count <= data.Length && |contents| == count &&
    forall k :: 0 <= k < count ==> contents[k] == data[Wrap(head + k, data.Length)]
  }

  constructor(capacity: nat)
    requires capacity > 0
    ensures Valid() && fresh(data)
    ensures contents == [] && data.Length == capacity
  {
    data := new int[capacity];
    head := 0;
    count := 0;
    contents := [];
  }

  method Enqueue(x: int)
    requires Valid() && count < data.Length
    modifies this, data
    ensures Valid() && data == old(data)
    ensures contents == old(contents) + [x]
  {
    var tail := Wrap(head + count, data.Length);
    assert forall k :: 0 <= k < count ==> Wrap(head + k, data.Length) != tail;
    data[tail] := x;
    count := count + 1;
    contents := contents + [x];
  }

  method Dequeue() returns (x: int)
    requires Valid() && count > 0
    modifies this
    ensures Valid() && data == old(data)
    ensures x == old(contents)[0]
    ensures contents == old(contents)[1..]
  {
    x := data[head];
    assert forall k :: 0 <= k < count - 1 ==>
      Wrap(Wrap(head + 1, data.Length) + k, data.Length) == Wrap(head + 1 + k, data.Length);
    head := Wrap(head + 1, data.Length);
    count := count - 1;
    contents := contents[1..];
  }
}

method Drain(q: RingBuffer) returns (xs: seq<int>)
  requires q.Valid()
  modifies q
  ensures q.Valid() && q.contents == []
  ensures xs == old(q.contents)
{
  xs := [];
  while q.count > 0
    invariant q.Valid() && q.data == old(q.data)
    invariant xs + q.contents == old(q.contents)
    decreases q.count
  {
    var x := q.Dequeue();
    xs := xs + [x];
  }
}
