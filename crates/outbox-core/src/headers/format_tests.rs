use super::*;

#[test]
fn length_limits_of_the_format() {
    assert_eq!(count_prefix(0), Some(0));
    assert_eq!(count_prefix(u32::MAX as usize), Some(u32::MAX));
    assert_eq!(name_len_prefix(u32::MAX as usize), Some(u32::MAX));
    assert_eq!(value_len_prefix(i32::MAX as usize), Some(i32::MAX));
    assert_eq!(value_len_prefix(i32::MAX as usize + 1), None);
    #[cfg(target_pointer_width = "64")]
    {
        assert_eq!(count_prefix(u32::MAX as usize + 1), None);
        assert_eq!(name_len_prefix(u32::MAX as usize + 1), None);
    }
}
