; Another input for bench --hints: factor a 24-bit semiprime (65519 * 241) with bit-vector multiplication: x * y = N, 1 < x <= y,
; with no overflow in 48 bits.
(set-logic QF_BV)
(declare-fun x () (_ BitVec 24))
(declare-fun y () (_ BitVec 24))
(assert (= (bvmul ((_ zero_extend 24) x) ((_ zero_extend 24) y)) #x000000F0EFFF))
(assert (bvugt x #x000001))
(assert (bvule x y))
(check-sat)
(get-value (x y))
