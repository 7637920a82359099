"""How much geometry a call may make: estimated from RNA, tallied, held before it stands."""
