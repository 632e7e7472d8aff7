// A bank account whose balance is the sum of its ghost ledger of transactions and never
// goes negative; transfers between two distinct accounts keep the total.

function Total(s: seq<int>): int
{
  if |s| == 0 then 0 else s[0] + Total(s[1..])
}

lemma TotalAppend(s: seq<int>, x: int)
  ensures Total(s + [x]) == Total(s) + x
{
  if |s| > 0 {
    assert (s + [x])[1..] == s[1..] + [x];
    TotalAppend(s[1..], x);
  }
}

class Account {
  var balance: int
  ghost var ledger: seq<int>

  predicate Valid()
    reads this
  {
    balance == Total(ledger) && balance >= 0
  }

  constructor()
    ensures Valid() && ledger == []
  {
    balance := 0;
    ledger := [];
  }

  method Deposit(amount: nat)
    requires Valid()
    modifies this
    ensures Valid() && ledger == old(ledger) + [amount]
    ensures balance == old(balance) + amount
  {
    TotalAppend(ledger, amount);
    balance := balance + amount;
    ledger := ledger + [amount];
  }

  method Withdraw(amount: nat)
    requires Valid() && amount <= balance
    modifies this
    ensures Valid() && ledger == old(ledger) + [-(amount as int)]
    ensures balance == old(balance) - amount
  {
    TotalAppend(ledger, -(amount as int));
    balance := balance - amount;
    ledger := ledger + [-(amount as int)];
  }
}

method Transfer(from: Account, to: Account, amount: nat)
  requires from != to && from.Valid() && to.Valid() && amount <= from.balance
  modifies from, to
  ensures from.Valid() && to.Valid()
  ensures from.balance + to.balance == old(from.balance) + old(to.balance)
  ensures from.balance == old(from.balance) - amount
{
  from.Withdraw(amount);
  to.Deposit(amount);
}

method DepositAll(acc: Account, amounts: seq<nat>)
  requires acc.Valid()
  modifies acc
  ensures acc.Valid() && acc.balance >= old(acc.balance)
  ensures |acc.ledger| == |old(acc.ledger)| + |amounts|
{
  var i := 0;
  while i < |amounts|
    invariant 0 <= i <= |amounts|
    invariant acc.Valid() && acc.balance >= old(acc.balance)
    invariant |acc.ledger| == |old(acc.ledger)| + i
  {
    acc.Deposit(amounts[i]);
    i := i + 1;
  }
}
