use super::*;
use sea_orm::Iterable;

#[test]
fn column_lists_match_the_model() {
    let declared: Vec<String> = Column::iter().map(|c| c.to_string()).collect();
    let listed: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    assert_eq!(listed, declared);
    let copied: Vec<String> = MESSAGE_COLUMNS.iter().map(|c| c.to_string()).collect();
    let messages: Vec<String> = super::super::message::COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(copied, messages);
}
