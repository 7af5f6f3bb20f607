;; A program that never ends: a loop that calls a function of two paths, alternately.
(module
  (func $step (param $i i32) (result i32)
    (if (result i32) (i32.and (local.get $i) (i32.const 1))
      (then (i32.add (local.get $i) (i32.const 3)))
      (else (i32.sub (local.get $i) (i32.const 1)))))
  (func (export "_start") (local $i i32)
    (loop $l
      (local.set $i (call $step (local.get $i)))
      (br $l))))
