// The integer square root, by counting up and by bisection.

method SqrtLinear(n: nat) returns (r: nat)
  ensures r * r <= n < (r + 1) * (r + 1)
{
  r := 0;
  while (r + 1) * (r + 1) <= n
    invariant r * r <= n
    decreases n - r * r
  {
    r := r + 1;
  }
}

method SqrtBisect(n: nat) returns (r: nat)
  ensures r * r <= n < (r + 1) * (r + 1)
{
  var lo, hi := 0, n + 1;
  while lo + 1 < hi
    invariant 0 <= lo < hi
    invariant lo * lo <= n < hi * hi
    decreases hi - lo
  {
    var mid := (lo + hi) / 2;
    if mid * mid <= n {
      lo := mid;
    } else {
      hi := mid;
    }
  }
  r := lo;
}
