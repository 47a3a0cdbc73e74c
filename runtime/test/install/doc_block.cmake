# m2n_doc_block(TEXT HEADING FENCE OUT): the first code block fenced with
# FENCE (e.g. "```c") after the line HEADING in TEXT, the contents of a
# documentation page, into OUT. The install test builds what the pages show.
function(m2n_doc_block text heading fence out)
  string(FIND "${text}" "${heading}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no \"${heading}\" in the page")
  endif()
  string(SUBSTRING "${text}" ${at} -1 text)
  string(FIND "${text}" "${fence}\n" open)
  string(LENGTH "${fence}\n" fence_length)
  math(EXPR begin "${open} + ${fence_length}")
  string(SUBSTRING "${text}" ${begin} -1 text)
  string(FIND "${text}" "\n```" close)
  string(SUBSTRING "${text}" 0 ${close} text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
