//! Kernel families: names that differ only in template arguments or tile sizes.
//!
//! A library picks a different variant of the same kernel when shapes, flags or the GPU change:
//! `sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_…` becomes `…256x128x32…`,
//! `volta_sgemm_128x32_nn` becomes `volta_sgemm_128x64_nn`, `dgrad_engine<float, 512, 6, …>`
//! becomes `dgrad_engine<float, 128, 6, …>`. A comparison that matched names exactly would
//! report one kernel removed and another added; matching their family keys reports one kernel
//! that changed, with a note naming both variants.
//!
//! The key of a name: a leading `void ` dropped, the parameter list dropped (from the first
//! `(` outside angle brackets), and every run of digits (with `x` between digit runs, as in
//! `128x128x32`) replaced by `#`. Type arguments stay: `FillFunctor<float>` and
//! `CUDAFunctor_add<int>` are different kernels, not variants of one.

/// The family key of a kernel name (see the module documentation).
pub fn family_key(name: &str) -> String {
    let s = name.trim();
    let s = s.strip_prefix("void ").unwrap_or(s);
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => {
                depth += 1;
                out.push(c);
            }
            '>' => {
                depth = depth.saturating_sub(1);
                out.push(c);
            }
            '(' if depth == 0 => break,
            c if c.is_ascii_digit() => {
                // a run of digits, possibly `x`-separated (tile sizes)
                while let Some(&n) = chars.peek() {
                    let tile_x = n == 'x' && {
                        let mut look = chars.clone();
                        look.next();
                        look.peek().is_some_and(|d| d.is_ascii_digit())
                    };
                    if n.is_ascii_digit() || tile_x {
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push('#');
            }
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::family_key;

    #[test]
    fn tile_sizes_and_template_arguments_fold() {
        let a = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_\
                 tensor16x8x16_kernel";
        let b = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize256x128x32_stage3_warpsize4x2x1_\
                 tensor16x8x16_kernel";
        assert_eq!(family_key(a), family_key(b));
        assert_eq!(
            family_key("volta_sgemm_128x32_nn"),
            family_key("volta_sgemm_128x64_nn")
        );
        assert_ne!(
            family_key("volta_sgemm_128x32_nn"),
            family_key("volta_sgemm_128x32_nt")
        );
        assert_eq!(
            family_key(
                "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)"
            ),
            "cudnn::detail::dgrad_engine<float, #, #, #, #, #, #, false>"
        );
        assert_ne!(
            family_key("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int)"),
            family_key("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3> >(int)"),
        );
        // names without digits or brackets are their own key
        assert_eq!(family_key("attn_fwd"), "attn_fwd");
        // an unbalanced `>` does not panic
        assert_eq!(family_key("a>b"), "a>b");
    }
}
