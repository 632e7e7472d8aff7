"""The language registry and the contract every registered adapter keeps (code_gym.languages)."""
import typing

import pytest

from code_gym import languages
from code_gym.languages.base import Language
from credit.syntax import GRAMMARS, grammar_for

# what the protocol declares: methods, and attributes with their annotations
MEMBERS = sorted({name for name in vars(Language) if not name.startswith("_")} | set(typing.get_type_hints(Language)))


@pytest.mark.parametrize("name", languages.NAMES)
def test_every_registered_adapter_provides_the_whole_protocol(name):
    adapter = languages.get(name)
    assert adapter.name == name
    missing = [member for member in MEMBERS if not hasattr(adapter, member)]
    assert not missing, f"{name} lacks {missing}"


@pytest.mark.parametrize("name", languages.NAMES)
def test_a_languages_grammar_is_credits_and_reads_its_source_files(name):
    """The adapter names credit's grammar for its diffs' syntax units, and that grammar reads every
    source file the adapter audits (the two tables list one language's files)."""
    adapter = languages.get(name)
    assert adapter.grammar in GRAMMARS, f"{name} names grammar {adapter.grammar!r}, not in credit.syntax.GRAMMARS"
    for suffix in adapter.source_suffixes:
        assert grammar_for(f"pkg/module{suffix}") is GRAMMARS[adapter.grammar]


def test_an_unknown_language_is_refused_with_the_known_ones(tiny_task):
    with pytest.raises(ValueError, match="unknown language 'cobol'; code-gym knows python"):
        languages.get("cobol")
    manifest = tiny_task.root / "task.toml"
    manifest.write_text(manifest.read_text().replace('kind = ', 'language = "cobol"\nkind = ', 1))
    from code_gym.tasks.task import TaskError, load_task
    with pytest.raises(TaskError, match="field 'language' must be one of python"):
        load_task(tiny_task.root)
