"""Acceptance 4 of issue 4: hostile templates get TemplateError, and the process goes on.

Sandbox escapes (dunder attributes, namespace internals), runaway loops, recursion and
huge outputs are each stopped by the environment (service/operations/chat/environment.py) — by the
sandbox, the operation budget or the size cap — never by the test's patience. No timing
assertions: the budgets are counted in operations and characters.
"""

from __future__ import annotations

import pytest

from tokserve.service.operations.chat import RenderLimits, render_chat
from tokserve.service.errors import TemplateError

MSGS = [{"role": "user", "content": "hi"}]
SPECIALS = {"bos_token": "<s>", "eos_token": "</s>"}


class PlainTok:
    """Only used with return_ids=False: render_chat then never touches the tokenizer
    beyond its special-token attributes."""

    bos_token = "<s>"
    eos_token = "</s>"
    pad_token = None

    def find_literals(self, text):
        return []


def render(source, limits=None, **kw):
    return render_chat(PlainTok(), source, messages=kw.pop("messages", MSGS),
                       reserved_literals="allow", return_ids=False, limits=limits, **kw)


ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ messages.__class__ }}",
    "{{ raise_exception.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ (messages|first).__class__.__base__ }}",
    "{{ cycler.__init__.__globals__.os }}",
    "{% set ns = namespace(_x=1) %}",
    "{% set ns = namespace() %}{% set ns.__dict__ = 1 %}",
    "{{ ''.format.__globals__ }}",
    "{{ '{0.__class__}'.format('') }}",
    "{{ messages[0].content.__class__ }}",
    "{{ dict.__call__.__globals__ }}",
    "{{ strftime_now.__globals__ }}",
    "{{ messages.append(1) }}",
    "{{ messages[0].update({'role': 'x'}) }}",
]


@pytest.mark.parametrize("source", ESCAPES)
def test_sandbox_escapes_are_template_errors(source):
    with pytest.raises(TemplateError) as info:
        render(source)
    assert info.value.code == "template_error"


RUNAWAYS = [
    # nested loops over the biggest range the sandbox allows
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    # loops whose bodies only do lookups
    "{% for i in range(100000) %}{% for j in range(100000) %}{{ messages[0].role }}"
    "{% endfor %}{% endfor %}",
    # exponential recursion through a macro
    "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
    # unbounded recursion
    "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
    "{{ range(10 ** 9) | list }}",
]


@pytest.mark.parametrize("source", RUNAWAYS)
def test_runaway_templates_are_stopped(source):
    with pytest.raises(TemplateError):
        render(source, limits=RenderLimits(max_operations=200_000, max_seconds=30))


HUGE = [
    "{{ 'x' * 10 ** 9 }}",
    "{{ ['x'] * 10 ** 9 }}",
    "{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}{{ ns.s }}",
    "{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s }}",
    "{{ 'x'.ljust(10 ** 9) }}",
    "{{ 'x'.center(10 ** 9) }}",
    "{{ 'x' | center(10 ** 9) }}",
    "{{ '%0999999999d' % 1 }}",
    "{{ '%0999999999d' | format(1) }}",
    "{{ '{:>999999999}'.format(1) }}",
    "{{ 'ab'.replace('', 'x' * 5000000) }}",
    "{{ 9 ** (9 ** 9) }}",
    "{% set ns = namespace(n=3) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}"
    "{% endfor %}{{ ns.n }}",
    "{% set big = 'x' * 1000000 %}{% set s %}{% for i in range(100) %}{{ big }}{% endfor %}"
    "{% endset %}{{ s }}",
    "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
    "{{ lipsum(100000) }}",
    "{{ messages | tojson(indent=1000000000) }}",
    "{{ ('x' * 100000) | join('y' * 100000) }}",
]


@pytest.mark.parametrize("source", HUGE)
def test_huge_outputs_are_stopped(source):
    with pytest.raises(TemplateError):
        render(source, limits=RenderLimits(max_output_chars=2_000_000))


def test_syntax_errors_and_raise_exception_are_template_errors():
    with pytest.raises(TemplateError):
        render("{% for %}")
    with pytest.raises(TemplateError) as info:
        render("{{ raise_exception('no system role') }}")
    assert "no system role" in info.value.message


def test_process_keeps_working_after_hostile_templates():
    for source in (ESCAPES[0], RUNAWAYS[0], HUGE[0]):
        with pytest.raises(TemplateError):
            render(source, limits=RenderLimits(max_operations=100_000))
    ok = render("{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}")
    assert ok.text == "user:hi"


def test_ordinary_operations_stay_allowed():
    source = ("{{ range(3) | list }} {{ range(5) | length }} {{ 'a' * 3 }} {{ 2 ** 10 }} "
              "{{ '%05d' % 42 }} {{ 'x'.ljust(4) }}| {{ [1, 2] | join(',') }} "
              "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a }} {{ dict(a=1) }}")
    assert render(source).text == "[0, 1, 2] 5 aaa 1024 00042 x   | 1,2 2 {'a': 1}"
