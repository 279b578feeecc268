; A loop and a call through memory, as clang emits them before -O passes:
; the small textual module of the phase-ordering tests (Python).
define internal i32 @square(i32 %v) {
entry:
  %v.addr = alloca i32
  store i32 %v, ptr %v.addr
  %0 = load i32, ptr %v.addr
  %mul = mul nsw i32 %0, %0
  ret i32 %mul
}

define i32 @sum(ptr %a, i32 %n) {
entry:
  %s = alloca i32
  %i = alloca i32
  store i32 0, ptr %s
  store i32 0, ptr %i
  br label %cond
cond:
  %0 = load i32, ptr %i
  %cmp = icmp slt i32 %0, %n
  br i1 %cmp, label %body, label %end
body:
  %idx = sext i32 %0 to i64
  %p = getelementptr inbounds i32, ptr %a, i64 %idx
  %1 = load i32, ptr %p
  %sq = call i32 @square(i32 %1)
  %2 = load i32, ptr %s
  %add = add nsw i32 %2, %sq
  store i32 %add, ptr %s
  %inc = add nsw i32 %0, 1
  store i32 %inc, ptr %i
  br label %cond
end:
  %r = load i32, ptr %s
  ret i32 %r
}
